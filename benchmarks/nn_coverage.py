"""torch.nn float hyperparameters under dynscalar: the catalogue and its runner.

One row per (module, float attribute, mode), marked, compiled and run with 4 values
beside an eager twin on each backend, and unmarked on stock torch; written to
``benchmarks/published/nn-coverage.json`` and rendered as ``docs/nn-coverage.md``."""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

import dynscalar
from benchmarks import harness
from benchmarks.harness import CountingBackend, machine_info, read_json, source_name, write_json
from benchmarks.render_nn_coverage import (
    BACKENDS,
    FLOAT32_DEFAULT,
    JSON_PATH,
    PAGE_PATH,
    SIGMAS,
    WRONG,
    compiled_once,
    render,
)
from dynscalar._bridge._nn import TOLERANCES
from dynscalar._caches import reset_caches

STAT_CALLS = 200  # calls per value for the per-element mean check


# --------------------------------------------------------------------------- the catalogue


@dataclass(frozen=True)
class Row:
    """One float hyperparameter of one torch.nn module in one mode."""

    id: str
    module: str  # shown in the table, e.g. "nn.Dropout"
    attrs: tuple[str, ...]  # dotted paths from the model; all get each value
    values: tuple[float, ...]
    build: Callable[[], nn.Module]
    inputs: Callable[[torch.Generator], tuple[Tensor, ...]]
    train: bool = False
    grad: tuple[int, ...] = (0,)  # inputs that require grad
    op: str | None = None  # key of _nn.TOLERANCES; None: exact on eager/aot_eager
    kind: str = "exact"  # "exact", "dropout" (mask check) or "mean" (per-element means)
    feature: bool = False  # dropout: one draw per (N, C) channel
    alpha: bool = False  # dropout: alpha dropout (dropped values are a constant)
    compiles: int = 1  # the graphs a perfectly dynamic value needs
    # the value never reaches the graph (eval): torch's tensorify pass restarts the first
    # compile to drop the unused float input on AOT backends (one more graph, first call)
    unused: bool = False
    # backends on which torch forces the value to a constant (no decomposition keeps it
    # symbolic): exact, one graph per value, warned; on AOT backends the first compile
    # tries the value symbolically, then restarts to specialize it, and later compiles
    # specialize it at once (forced floats are remembered, as stock torch remembers them)
    specialized: tuple[str, ...] = ()
    note: str = ""

    @property
    def mode(self) -> str:
        return "train" if self.train else "eval"

    def expected(self, backend: str) -> int:
        """The graphs ``backend`` compiles for this row's 4 values."""
        restart = backend != "eager"
        if backend in self.specialized:
            # the first value tried symbolically, then restarted; torch remembers the forced
            # float, so each later value compiles once
            return len(self.values) + restart
        return self.compiles + (self.unused and restart)


def _randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return torch.randn(*shape, generator=g) * scale


def _sign(g: torch.Generator, *shape: int) -> Tensor:
    return torch.randint(0, 2, shape, generator=g).float() * 2 - 1


def _positive(g: torch.Generator, *shape: int) -> Tensor:
    """Strictly positive inputs: dropped elements are recognisable (0, or < 0 for alpha)."""
    return torch.rand(*shape, generator=g) + 0.5


class SDPA(nn.Module):
    """``F.scaled_dot_product_attention`` with its floats held as attributes."""

    def __init__(self, dropout_p: float = 0.0, scale: float | None = None) -> None:
        super().__init__()
        self.dropout_p = dropout_p
        self.scale = scale

    def forward(self, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
        p = self.dropout_p if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p, scale=self.scale)


class ClipRange(nn.Module):
    """PPO's clipped ratio, ``torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps)``."""

    def __init__(self, clip_eps: float = 0.2) -> None:
        super().__init__()
        self.clip_eps = clip_eps

    def forward(self, ratio: Tensor) -> Tensor:
        return torch.clamp(ratio, 1 - self.clip_eps, 1 + self.clip_eps)


def _bn(cls: type[nn.Module], c: int) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        m = cls(c)
        with torch.no_grad():  # trained-looking running statistics for eval rows
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.uniform_(0.5, 1.5)
            m.bias.uniform_(-0.5, 0.5)
        return m

    return build


def _affine(m: nn.Module) -> nn.Module:
    """Non-trivial affine parameters, so weight and bias gradients mean something."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.rand(p.shape) + 0.5 if "weight" in name else torch.randn(p.shape))
    return m


def _ce(**kwargs: Any) -> Callable[[], nn.Module]:
    return lambda: nn.CrossEntropyLoss(**kwargs)


def _ce_indices(g: torch.Generator) -> tuple[Tensor, ...]:
    target = torch.randint(0, 7, (32,), generator=g)
    target[::5] = -1  # ignore_index rows
    return _randn(g, 32, 7, scale=2.0), target


def _ce_weighted(g: torch.Generator) -> tuple[Tensor, ...]:
    return _randn(g, 32, 7, scale=2.0), torch.randint(0, 7, (32,), generator=g)


def _ce_3d(g: torch.Generator) -> tuple[Tensor, ...]:
    target = torch.randint(0, 5, (8, 6), generator=g)
    target[0, :3] = 2  # ignore_index = 2
    return _randn(g, 8, 5, 6, scale=2.0), target


def _ce_probs(g: torch.Generator) -> tuple[Tensor, ...]:
    return _randn(g, 32, 7, scale=2.0), torch.softmax(_randn(g, 32, 7), 1)


def _norm_small(g: torch.Generator, *shape: int) -> tuple[Tensor, ...]:
    """Some rows with a small spread, so eps changes the result visibly."""
    x = _randn(g, *shape)
    x[0] = x[0] * 1e-3
    return (x,)


def _cos(g: torch.Generator) -> tuple[Tensor, ...]:
    scales = torch.logspace(-3, 1, 32).unsqueeze(1)  # norms from ~1e-3 to ~10: eps matters
    return _randn(g, 32, 8) * scales, _randn(g, 32, 8)


def _qkv(g: torch.Generator) -> tuple[Tensor, ...]:
    return _randn(g, 2, 2, 5, 8), _randn(g, 2, 2, 6, 8), _randn(g, 2, 2, 6, 8)


def _seq(g: torch.Generator) -> tuple[Tensor, ...]:
    return (_randn(g, 3, 5, 8),)


def _mha_in(g: torch.Generator) -> tuple[Tensor, ...]:
    return _randn(g, 3, 5, 8), _randn(g, 3, 6, 8), _randn(g, 3, 6, 8)


def _mha() -> nn.Module:
    return nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True)


def _encoder() -> nn.Module:
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.1, batch_first=True)


P = (0.1, 0.25, 0.5, 0.7)
EPS = (1e-5, 1e-3, 0.1, 1.0)
MARGIN = (0.1, 0.3, 0.5, 1.0)
SMOOTHING = (0.05, 0.1, 0.2, 0.4)
TRANSFORMER_ATTRS = ("self_attn.dropout", "dropout.p", "dropout1.p", "dropout2.p")
ACT = lambda g: (_randn(g, 16, 33, scale=3.0),)  # noqa: E731
LRN = lambda g: (_randn(g, 2, 6, 5, 5),)  # noqa: E731


# fmt: off
def catalogue() -> list[Row]:
    """Every row of the table, in table order."""
    rows = [
        # ------------------------------------------------------------------ dropout
        Row("dropout", "nn.Dropout", ("p",), P, lambda: nn.Dropout(0.5),
            lambda g: (_positive(g, 256, 256),), train=True, kind="dropout"),
        Row("dropout1d", "nn.Dropout1d", ("p",), P, lambda: nn.Dropout1d(0.5),
            lambda g: (_positive(g, 64, 256, 4),), train=True, kind="dropout", feature=True),
        Row("dropout2d", "nn.Dropout2d", ("p",), P, lambda: nn.Dropout2d(0.5),
            lambda g: (_positive(g, 64, 128, 2, 2),), train=True, kind="dropout", feature=True),
        Row("dropout3d", "nn.Dropout3d", ("p",), P, lambda: nn.Dropout3d(0.5),
            lambda g: (_positive(g, 32, 128, 2, 2, 2),), train=True, kind="dropout", feature=True),
        Row("alphadropout", "nn.AlphaDropout", ("p",), P, lambda: nn.AlphaDropout(0.5),
            lambda g: (_positive(g, 256, 256),), train=True, kind="dropout", alpha=True),
        Row("featurealphadropout", "nn.FeatureAlphaDropout", ("p",), P,
            lambda: nn.FeatureAlphaDropout(0.5), lambda g: (_positive(g, 64, 256, 2, 2),),
            train=True, kind="dropout", feature=True, alpha=True),
        # ------------------------------------------------------------------ activations
        Row("leakyrelu", "nn.LeakyReLU", ("negative_slope",), (0.01, 0.1, 0.2, 0.3),
            lambda: nn.LeakyReLU(0.01), ACT),
        Row("rrelu-eval", "nn.RReLU", ("lower",), (0.05, 0.1, 0.125, 0.2),
            lambda: nn.RReLU(0.125, 1 / 3), ACT),
        Row("rrelu-upper-eval", "nn.RReLU", ("upper",), (0.2, 0.3, 0.4, 0.5),
            lambda: nn.RReLU(0.125, 1 / 3), ACT),
        Row("rrelu-train", "nn.RReLU", ("lower",), (0.05, 0.1, 0.125, 0.2),
            lambda: nn.RReLU(0.125, 1 / 3), ACT, train=True, kind="mean"),
        Row("elu", "nn.ELU", ("alpha",), (0.5, 1.0, 1.5, 2.0), lambda: nn.ELU(1.0), ACT, op="elu"),
        Row("celu", "nn.CELU", ("alpha",), (0.5, 1.0, 1.5, 2.0), lambda: nn.CELU(1.0), ACT,
            op="celu"),
        Row("softplus-beta", "nn.Softplus", ("beta",), (0.5, 1.0, 2.0, 3.0),
            lambda: nn.Softplus(1.0, 5.0), ACT, op="softplus"),
        Row("softplus-threshold", "nn.Softplus", ("threshold",), (1.0, 2.0, 5.0, 20.0),
            lambda: nn.Softplus(1.0, 20.0), ACT, op="softplus"),
        Row("hardtanh-max", "nn.Hardtanh", ("max_val",), (0.5, 1.0, 1.5, 2.0),
            lambda: nn.Hardtanh(-1.0, 1.0), ACT),
        Row("hardtanh-min", "nn.Hardtanh", ("min_val",), (-2.0, -1.5, -1.0, -0.5),
            lambda: nn.Hardtanh(-1.0, 1.0), ACT),
        Row("clamp-clip-range", "torch.clamp (PPO clip range)", ("clip_eps",),
            (0.1, 0.15, 0.2, 0.3), ClipRange, lambda g: (_positive(g, 64, 16),)),
        Row("threshold", "nn.Threshold", ("threshold",), (-0.5, 0.0, 0.1, 0.5),
            lambda: nn.Threshold(0.1, -1.0), ACT),
        Row("threshold-value", "nn.Threshold", ("value",), (-2.0, -1.0, 0.5, 3.0),
            lambda: nn.Threshold(0.1, -1.0), ACT),
        Row("hardshrink", "nn.Hardshrink", ("lambd",), (0.25, 0.5, 0.75, 1.0),
            lambda: nn.Hardshrink(0.5), ACT),
        Row("softshrink", "nn.Softshrink", ("lambd",), (0.25, 0.5, 0.75, 1.0),
            lambda: nn.Softshrink(0.5), ACT),
        # ------------------------------------------------------------------ norms
        Row("layernorm", "nn.LayerNorm", ("eps",), EPS, lambda: _affine(nn.LayerNorm(16)),
            lambda g: _norm_small(g, 4, 5, 16), op="layer_norm"),
        Row("groupnorm", "nn.GroupNorm", ("eps",), EPS, lambda: _affine(nn.GroupNorm(3, 6)),
            lambda g: _norm_small(g, 4, 6, 5, 3), op="group_norm"),
        Row("rmsnorm", "nn.RMSNorm", ("eps",), EPS, lambda: _affine(nn.RMSNorm(16, eps=1e-6)),
            lambda g: _norm_small(g, 4, 5, 16), op="rms_norm"),
        Row("instancenorm1d", "nn.InstanceNorm1d", ("eps",), EPS,
            lambda: _affine(nn.InstanceNorm1d(6, affine=True)), lambda g: _norm_small(g, 4, 6, 10),
            op="instance_norm"),
        Row("instancenorm2d", "nn.InstanceNorm2d", ("eps",), EPS, lambda: nn.InstanceNorm2d(4),
            lambda g: _norm_small(g, 3, 4, 5, 5), op="instance_norm"),
        Row("instancenorm1d-stats", "nn.InstanceNorm1d (track_running_stats)", ("eps",), EPS,
            lambda: nn.InstanceNorm1d(6, track_running_stats=True),
            lambda g: _norm_small(g, 4, 6, 10), train=True, op="instance_norm"),
        Row("localresponsenorm-alpha", "nn.LocalResponseNorm", ("alpha",), (1e-4, 1e-3, 1e-2, 0.1),
            lambda: nn.LocalResponseNorm(3), LRN,
            note="no decomposition needed: F.local_response_norm multiplies by alpha"),
        Row("localresponsenorm-k", "nn.LocalResponseNorm", ("k",), (0.5, 1.0, 2.0, 3.0),
            lambda: nn.LocalResponseNorm(3), LRN,
            note="no decomposition needed: F.local_response_norm adds k"),
        Row("localresponsenorm-beta", "nn.LocalResponseNorm", ("beta",), (0.5, 0.75, 1.0, 1.5),
            lambda: nn.LocalResponseNorm(3), LRN, op="pow",
            note="`div.pow(beta)`: traced as `torch.pow` with a 0-d tensor exponent"),
    ]
    for cls, shape in ((nn.BatchNorm1d, (16, 6, 5)), (nn.BatchNorm2d, (8, 6, 4, 4))):
        name = cls.__name__.lower()
        inputs = lambda g, s=shape: (_randn(g, *s, scale=2.0) + 0.3,)  # noqa: E731
        rows += [
            Row(f"{name}-momentum-train", f"nn.{cls.__name__}", ("momentum",),
                (0.05, 0.1, 0.3, 0.9), _bn(cls, 6), inputs, train=True, op="batch_norm"),
            Row(f"{name}-eps-train", f"nn.{cls.__name__}", ("eps",), EPS, _bn(cls, 6), inputs,
                train=True, op="batch_norm"),
            Row(f"{name}-momentum-eval", f"nn.{cls.__name__}", ("momentum",),
                (0.05, 0.1, 0.3, 0.9), _bn(cls, 6), inputs, op="batch_norm", unused=True,
                note="momentum is unused in eval"),
            Row(f"{name}-eps-eval", f"nn.{cls.__name__}", ("eps",), EPS, _bn(cls, 6), inputs,
                op="batch_norm"),
        ]
    rows += [
        # ------------------------------------------------------------------ attention
        Row("mha-dropout-train", "nn.MultiheadAttention", ("dropout",), (0.1, 0.2, 0.3, 0.5), _mha,
            _mha_in, train=True, grad=(0, 1, 2), kind="mean"),
        Row("mha-dropout-eval", "nn.MultiheadAttention", ("dropout",), (0.1, 0.2, 0.3, 0.5), _mha,
            _mha_in, grad=(0, 1, 2), unused=True, note="dropout is unused in eval"),
        Row("transformer-dropout-train", "nn.TransformerEncoderLayer", TRANSFORMER_ATTRS,
            (0.1, 0.2, 0.3, 0.5), _encoder, _seq, train=True, kind="mean"),
        Row("transformer-dropout-eval", "nn.TransformerEncoderLayer", TRANSFORMER_ATTRS,
            (0.1, 0.2, 0.3, 0.5), _encoder, _seq, unused=True, note="dropout is unused in eval"),
        Row("sdpa-dropout-train", "F.scaled_dot_product_attention", ("dropout_p",),
            (0.1, 0.2, 0.3, 0.5), lambda: SDPA(dropout_p=0.1), _qkv, train=True, grad=(0, 1, 2),
            kind="mean"),
        Row("sdpa-dropout-eval", "F.scaled_dot_product_attention", ("dropout_p",),
            (0.1, 0.2, 0.3, 0.5), lambda: SDPA(dropout_p=0.1), _qkv, grad=(0, 1, 2),
            note="the wrapper passes 0.0 in eval: Dynamo never reads `dropout_p`"),
        Row("sdpa-scale", "F.scaled_dot_product_attention", ("scale",), (0.1, 0.3, 0.5, 1.0),
            lambda: SDPA(scale=0.3), _qkv, grad=(0, 1, 2), op="scaled_dot_product_attention"),
        # ------------------------------------------------------------------ losses
        Row("crossentropy-ignore", "nn.CrossEntropyLoss (indices, ignore_index)",
            ("label_smoothing",), SMOOTHING, _ce(ignore_index=-1), _ce_indices,
            op="cross_entropy_loss"),
        Row("crossentropy-weight", "nn.CrossEntropyLoss (indices, class weights)",
            ("label_smoothing",), SMOOTHING, _ce(weight=torch.linspace(0.5, 2.0, 7)), _ce_weighted,
            op="cross_entropy_loss"),
        Row("crossentropy-3d", "nn.CrossEntropyLoss (N, C, d indices, ignore_index, none)",
            ("label_smoothing",), SMOOTHING, _ce(ignore_index=2, reduction="none"), _ce_3d,
            op="cross_entropy_loss"),
        Row("crossentropy-probs", "nn.CrossEntropyLoss (class probabilities)",
            ("label_smoothing",), SMOOTHING, _ce(), _ce_probs,
            grad=(0, 1), op="cross_entropy_loss"),
        Row("huber", "nn.HuberLoss", ("delta",), (0.5, 1.0, 1.5, 2.0), nn.HuberLoss,
            lambda g: (_randn(g, 16, 9, scale=2.0), _randn(g, 16, 9)),
            grad=(0, 1), op="huber_loss"),
        Row("smoothl1", "nn.SmoothL1Loss", ("beta",), (0.5, 1.0, 1.5, 2.0), nn.SmoothL1Loss,
            lambda g: (_randn(g, 16, 9, scale=2.0), _randn(g, 16, 9)), grad=(0, 1),
            op="smooth_l1_loss"),
        Row("marginranking", "nn.MarginRankingLoss", ("margin",), MARGIN, nn.MarginRankingLoss,
            lambda g: (_randn(g, 64), _randn(g, 64), _sign(g, 64)), grad=(0, 1)),
        Row("hingeembedding", "nn.HingeEmbeddingLoss", ("margin",), MARGIN, nn.HingeEmbeddingLoss,
            lambda g: (_randn(g, 64, 5).abs(), _sign(g, 64, 5))),
        Row("tripletmargin", "nn.TripletMarginLoss", ("margin",), MARGIN, nn.TripletMarginLoss,
            lambda g: (_randn(g, 32, 8), _randn(g, 32, 8), _randn(g, 32, 8)), grad=(0, 1, 2)),
        Row("cosineembedding", "nn.CosineEmbeddingLoss", ("margin",), MARGIN,
            nn.CosineEmbeddingLoss, lambda g: (_randn(g, 32, 8), _randn(g, 32, 8), _sign(g, 32)),
            grad=(0, 1)),
        Row("multimargin", "nn.MultiMarginLoss", ("margin",), MARGIN, nn.MultiMarginLoss,
            lambda g: (_randn(g, 32, 8), torch.randint(0, 8, (32,), generator=g)),
            op="multi_margin_loss"),
        Row("tripletmargin-eps", "nn.TripletMarginLoss", ("eps",), (1e-6, 1e-3, 0.1, 1.0),
            nn.TripletMarginLoss, lambda g: (_randn(g, 32, 8), _randn(g, 32, 8), _randn(g, 32, 8)),
            grad=(0, 1, 2)),
        Row("poissonnll-eps", "nn.PoissonNLLLoss (log_input=False, full)", ("eps",),
            (1e-8, 1e-3, 0.1, 0.5), lambda: nn.PoissonNLLLoss(log_input=False, full=True),
            lambda g: (torch.rand(16, 4, generator=g) + 0.05, torch.rand(16, 4, generator=g) * 4),
            grad=(0, 1)),
        Row("cosinesimilarity", "nn.CosineSimilarity", ("eps",), (1e-8, 1e-3, 0.5, 2.0),
            nn.CosineSimilarity, _cos, grad=(0, 1)),
        Row("pairwisedistance-eps", "nn.PairwiseDistance", ("eps",), (1e-6, 1e-3, 0.1, 1.0),
            nn.PairwiseDistance, lambda g: (_randn(g, 16, 8), _randn(g, 16, 8)), grad=(0, 1)),
        Row("pairwisedistance-norm", "nn.PairwiseDistance", ("norm",), (1.0, 1.5, 2.0, 3.0),
            nn.PairwiseDistance, lambda g: (_randn(g, 16, 8), _randn(g, 16, 8)), grad=(0, 1),
            compiles=2, specialized=("aot_eager", "inductor"),
            note="on eager the order stays symbolic with a guard on `ord == 2` (2 paths); on "
            "AOT backends the order of `linalg.vector_norm` is a Scalar the tensorify pass "
            "cannot lower"),
        Row("lppool-norm", "nn.LPPool1d", ("norm_type",), (1.5, 2.0, 3.0, 4.0),
            lambda: nn.LPPool1d(2.0, 2), lambda g: (_randn(g, 2, 3, 8).abs() + 0.1,), op="pow",
            note="`pow(norm_type)`: traced as `torch.pow` with a 0-d tensor exponent"),
    ]
    return rows
# fmt: on


ROWS: dict[str, Row] = {row.id: row for row in catalogue()}


# --------------------------------------------------------------------------- running a row


def _owner(model: nn.Module, path: str) -> tuple[nn.Module, str]:
    prefix, _, leaf = path.rpartition(".")
    return (model.get_submodule(prefix) if prefix else model), leaf


def _set(model: nn.Module, row: Row, value: float) -> None:
    for path in row.attrs:
        owner, leaf = _owner(model, path)
        setattr(owner, leaf, value)


def _flat(out: Any) -> list[Tensor]:
    if isinstance(out, Tensor):
        return [out]
    return [t for t in out if isinstance(t, Tensor)]


def _max_abs(got: Tensor, want: Tensor) -> float:
    if got.shape != want.shape or got.numel() == 0:
        return 0.0 if got.shape == want.shape else math.inf
    both_nan = got.isnan() & want.isnan()
    diff = (got.double() - want.double()).abs().masked_fill(both_nan, 0.0)
    return float(diff.max())


@dataclass
class Result:
    """One row on one backend, and its differences from eager against its tolerance."""

    backend: str
    marked: bool
    compiles: int = 0
    per_call: list[int] = field(default_factory=list)  # graphs compiled so far, after each value
    rtol: float = 0.0
    atol: float = 0.0
    max_abs: dict[str, float] = field(
        default_factory=lambda: {"output": 0.0, "grad": 0.0, "buffer": 0.0}
    )
    # the smallest atol that would pass with this rtol (for measuring stock inductor)
    needed_atol: float = 0.0
    failures: list[str] = field(default_factory=list)
    check: str = ""  # the random rows' distribution check, in words
    stat: float | None = None  # its largest deviation, in standard deviations/errors
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0

    def add(self, kind: str, name: str, got: Tensor, want: Tensor) -> None:
        """Compare ``got`` with ``want``: the largest difference and any failure."""
        self.max_abs[kind] = max(self.max_abs[kind], _max_abs(got, want))
        if got.shape == want.shape and got.numel():
            excess = (got.double() - want.double()).abs() - self.rtol * want.double().abs()
            excess = excess.masked_fill(got.isnan() & want.isnan(), 0.0)
            self.needed_atol = max(self.needed_atol, float(excess.max()))
        try:
            torch.testing.assert_close(got, want, rtol=self.rtol, atol=self.atol, equal_nan=True)
        except AssertionError as exc:
            first = str(exc).strip().splitlines()
            self.failures.append(f"{name}: {' '.join(first[:3])}")

    @property
    def equal(self) -> bool:
        return self.error is None and not self.failures

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        return out | {"equal": self.equal, "seconds": round(self.seconds, 2)}


def eager_tolerance(row: Row) -> tuple[float, float]:
    """``_nn.TOLERANCES`` for the row's op; exact for ops not listed there."""
    if row.op is not None and row.op in TOLERANCES:
        rtol, atol, _ = TOLERANCES[row.op]
        return rtol, atol
    return 0.0, 0.0


def inductor_tolerance(stock: Result | dict[str, Any] | None) -> dict[str, Any]:
    """torch's float32 default, unless stock inductor (unmarked) needed more on this row
    and its difference is rounding (below ``WRONG``)."""
    rtol, atol = FLOAT32_DEFAULT
    if stock is None:
        return {"rtol": rtol, "atol": atol, "source": "float32 default"}
    got = stock.to_json() if isinstance(stock, Result) else stock
    needed, worst = got["needed_atol"], max(got["max_abs"].values(), default=0.0)
    if worst >= WRONG:
        return {"rtol": rtol, "atol": atol, "source": "float32 default; stock inductor wrong"}
    if needed > atol:
        return {"rtol": rtol, "atol": needed, "source": "stock inductor"}
    return {"rtol": rtol, "atol": atol, "source": "float32 default"}


@contextlib.contextmanager
def _recording(result: Result) -> Iterator[None]:
    """dynscalar's warnings of this run (each run reports its own: caches reset)."""
    reset_caches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: list[str] = []
    for w in caught:
        if issubclass(w.category, dynscalar.DynscalarWarning):
            text = f"{w.category.__name__}: {str(w.message).splitlines()[0]}"
            if text not in seen:
                seen.append(text)
    result.warnings = seen


def _prepare(row: Row, marked: bool) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    model = row.build().train(row.train)
    eager = copy.deepcopy(model)
    if marked:
        for path in row.attrs:
            owner, leaf = _owner(model, path)
            dynscalar.mark_dynamic_attr(owner, leaf)
    return model, eager


def _inputs(row: Row, seed: int) -> tuple[Tensor, ...]:
    g = torch.Generator().manual_seed(1000 + seed)
    return row.inputs(g)


def _leaves(inputs: tuple[Tensor, ...], row: Row) -> list[Tensor]:
    return [
        x.detach().clone().requires_grad_(i in row.grad and x.is_floating_point())
        for i, x in enumerate(inputs)
    ]


def _step(
    fn: Callable[..., Any], model: nn.Module, inputs: list[Tensor], seed: int
) -> tuple[list[Tensor], list[Tensor]]:
    """Outputs, then the gradients of inputs and parameters for fixed cotangents."""
    for p in model.parameters():
        p.grad = None
    outs = _flat(fn(*inputs))
    g = torch.Generator().manual_seed(2000 + seed)
    loss = sum(
        (o * torch.randn(o.shape, generator=g, dtype=o.dtype)).sum()
        for o in outs
        if o.requires_grad
    )
    grads: list[Tensor] = []
    if isinstance(loss, Tensor):
        loss.backward()
        for x in inputs:
            if x.requires_grad:
                grads.append(x.grad if x.grad is not None else torch.zeros_like(x))
        for p in model.parameters():
            if p.requires_grad:
                grads.append(p.grad if p.grad is not None else torch.zeros_like(p))
    return [o.detach() for o in outs], grads


@dataclass
class Pass:
    """One value's run: the compiled and eager sides and where their differences go."""

    row: Row
    compiled: Any
    model: nn.Module
    eager: nn.Module
    cmp: Result
    value: float
    seed: int
    inputs: tuple[Tensor, ...]

    def step(self, compiled: bool) -> tuple[list[Tensor], list[Tensor]]:
        fn, owner = (self.compiled, self.model) if compiled else (self.eager, self.eager)
        return _step(fn, owner, _leaves(self.inputs, self.row), self.seed)


def _check_exact(p: Pass, calls: int) -> float:
    outs_c, grads_c = p.step(True)
    outs_e, grads_e = p.step(False)
    for j, (a, b) in enumerate(zip(outs_c, outs_e, strict=True)):
        p.cmp.add("output", f"value {p.value}: output {j}", a, b)
    for j, (a, b) in enumerate(zip(grads_c, grads_e, strict=True)):
        p.cmp.add("grad", f"value {p.value}: gradient {j}", a, b)
    buffers_e = dict(p.eager.named_buffers())
    for name, buf in p.model.named_buffers():
        p.cmp.add("buffer", f"value {p.value}: buffer {name}", buf, buffers_e[name])
    return 0.0


def _dropped(row: Row, out: Tensor) -> Tensor:
    """Dropped elements (inputs are positive: dropped is 0, or negative for alpha dropout)."""
    return out < 0 if row.alpha else out == 0


def _check_dropout(p: Pass, calls: int) -> float:
    """The dropped fraction against ``p``; the values where both sides agree, against eager."""
    row, value, cmp = p.row, p.value, p.cmp
    (out_c,), (grad_c,) = p.step(True)
    (out_e,), (grad_e,) = p.step(False)
    drop_c, drop_e = _dropped(row, out_c), _dropped(row, out_e)
    if row.feature:  # one draw per (N, C) channel: whole channels dropped or kept
        per_c = drop_c.flatten(2)
        if not bool((per_c.all(-1) | ~per_c.any(-1)).all()):
            cmp.failures.append(f"value {value}: channels partly dropped")
        drop_c, drop_e = drop_c.flatten(2).all(-1), drop_e.flatten(2).all(-1)
        agree = (drop_c == drop_e)[(...,) + (None,) * (out_c.dim() - 2)].expand_as(out_c)
    else:
        agree = drop_c == drop_e
    fraction = float(drop_c.float().mean())
    sd = math.sqrt(value * (1 - value) / drop_c.numel())
    sigmas = abs(fraction - value) / sd if sd else (0.0 if fraction == value else math.inf)
    if sigmas > SIGMAS:
        cmp.failures.append(f"value {value}: dropped fraction {fraction} is {sigmas:.1f} sd off")
    if not bool(agree.any()):
        cmp.failures.append(f"value {value}: no element kept by both")
    cmp.add("output", f"value {value}: output where both agree", out_c[agree], out_e[agree])
    cmp.add("grad", f"value {value}: gradient where both agree", grad_c[agree], grad_e[agree])
    return sigmas


def _check_means(p: Pass, calls: int) -> float:
    """Per-element means of outputs and gradients over ``calls`` calls, against eager's."""
    samples: list[list[Tensor]] = [[], []]
    for side in (0, 1):
        for _ in range(calls):
            outs, grads = p.step(side == 0)
            samples[side].append(torch.cat([t.flatten() for t in outs + grads]).double())
    a, b = torch.stack(samples[0]), torch.stack(samples[1])
    se = (a.var(0) / calls + b.var(0) / calls).sqrt()
    # beyond the backend's tolerance: a quantity that is 0 in exact arithmetic (the
    # gradient of attention's key bias) is rounding noise whose mean depends on the
    # kernels' summation order, not on the random stream
    floor = p.cmp.atol + p.cmp.rtol * b.mean(0).abs()
    gap = ((a.mean(0) - b.mean(0)).abs() - floor).clamp_min(0)
    constant = se == 0
    z = float(torch.where(constant, torch.zeros_like(gap), gap / se.clamp_min(1e-300)).max())
    if z > SIGMAS:
        p.cmp.failures.append(f"value {p.value}: a mean is {z:.1f} standard errors off")
    if bool(constant.any()):  # elements no dropout reaches: equal as on exact rows
        p.cmp.add("output", f"value {p.value}: constant elements", a[0][constant], b[0][constant])
    return z


CHECKS = {"exact": _check_exact, "dropout": _check_dropout, "mean": _check_means}


def _described(row: Row, worst: float, calls: int) -> str:
    """The random rows' distribution check, in words."""
    if row.kind == "dropout":
        unit = "channels" if row.feature else "elements"
        kept = "kept and dropped" if row.alpha else "kept"
        return (
            f"dropped {unit} within {SIGMAS:g} sd of p (worst {worst:.1f} sd); "
            f"{kept} values vs eager where both agree"
        )
    return (
        f"per-element means of outputs and gradients over {calls} calls per value within "
        f"{SIGMAS:g} standard errors beyond the tolerance (worst {worst:.1f})"
    )


def run_row(
    row: Row,
    backend: str,
    *,
    marked: bool = True,
    tolerance: tuple[float, float] | None = None,
    calls: int = STAT_CALLS,
) -> Result:
    """Compile ``row`` on ``backend`` and run its 4 values beside an eager twin."""
    if tolerance is None:
        tolerance = eager_tolerance(row) if backend != "inductor" else FLOAT32_DEFAULT
    rtol, atol = tolerance
    result = Result(backend, marked, rtol=rtol, atol=atol)
    start = time.perf_counter()
    torch._dynamo.reset()
    try:
        with _recording(result):
            model, eager = _prepare(row, marked)
            counter = CountingBackend(backend)
            compiled = torch.compile(model, backend=counter)

            worst = 0.0
            for i, value in enumerate(row.values):
                _set(model, row, value)
                _set(eager, row, value)
                p = Pass(row, compiled, model, eager, result, value, i, _inputs(row, i))
                worst = max(worst, CHECKS[row.kind](p, calls))
                result.per_call.append(counter.frame_count)
                result.compiles = counter.frame_count
            if row.kind != "exact":
                result.check, result.stat = _described(row, worst, calls), worst
    except Exception as exc:  # noqa: BLE001 - recorded in the table, never hidden
        result.error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
    finally:
        torch._dynamo.reset()
    result.seconds = time.perf_counter() - start
    return result


# --------------------------------------------------------------------------- the whole table


def status(row: Row, results: dict[str, dict[str, Any]]) -> str:
    """``dynamic, equal``: on every backend no recompile after the first value, and equal."""
    if any(r["error"] for r in results.values()):
        return "error"
    if not all(r["equal"] for r in results.values()):
        return "NOT EQUAL"
    if all(compiled_once(r) for r in results.values()):
        return "dynamic, equal"
    if any(r["warnings"] for r in results.values()):
        return "specialized (warned), equal"
    return "recompiles, equal"


def run_table(
    rows: list[Row], backends: list[str], *, stock: bool = True, log: Any = print
) -> dict[str, Any]:
    """Every row on ``backends`` (and unmarked on stock torch), its status, logged."""
    out: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {"id": row.id, "expected": {b: row.expected(b) for b in BACKENDS}}
        entry |= {k: getattr(row, k) for k in ("module", "attrs", "values", "mode", "kind", "op")}
        entry |= {"note": row.note, "tolerance": list(eager_tolerance(row)), "backends": {}}
        entry["stock"] = {}
        if stock:
            entry["stock"]["aot_eager"] = run_row(row, "aot_eager", marked=False).to_json()
        for backend in backends:
            tol = None
            if backend == "inductor":
                base = run_row(row, "inductor", marked=False) if stock else None
                if base is not None:
                    entry["stock"]["inductor"] = base.to_json()
                entry["inductor_tolerance"] = inductor_tolerance(base)
                tol = (entry["inductor_tolerance"]["rtol"], entry["inductor_tolerance"]["atol"])
            entry["backends"][backend] = run_row(row, backend, tolerance=tol).to_json()
        entry["status"] = status(row, entry["backends"])
        summary = " ".join(
            f"{b}={r['compiles']}{'' if r['equal'] else '!'}" for b, r in entry["backends"].items()
        )
        stock_aot = entry["stock"].get("aot_eager", {}).get("compiles", "-")
        log(f"{row.id:28s} stock={stock_aot} {summary}  {entry['status']}", flush=True)
        out.append(entry)
    return {"rows": out}


# --------------------------------------------------------------------------- command line


def _merged(
    published: dict[str, Any], run: dict[str, Any], entries: list[dict[str, Any]], wall_s: float
) -> dict[str, Any]:
    """``published`` with ``entries`` in place of (or beside) its rows of the same ids."""
    by_id = {e["id"]: e for e in published["rows"]}
    by_id.update({e["id"]: e for e in entries})
    order = [row.id for row in catalogue()]
    published["rows"] = [by_id[i] for i in order if i in by_id]
    published["tolerances"] = run["tolerances"]
    published.setdefault("partial_runs", []).append(
        {
            "rows": [e["id"] for e in entries],
            "backends": run["config"]["backends"],
            "machine": run["machine"],
            "wall_s": wall_s,
        }
    )
    return published


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--rows", default="", help="comma-separated row ids (default: all)")
    parser.add_argument("--out", type=Path, default=JSON_PATH)
    parser.add_argument("--page", type=Path, default=PAGE_PATH)
    parser.add_argument("--no-stock", action="store_true", help="skip the unmarked baselines")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --rows: re-measure those rows into the existing --out (new rows are "
        "placed in catalogue order); the JSON records which rows each partial run measured",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (default 1: on 2 shared cores, 2 threads made a tiny "
        "TransformerEncoderLayer step ~80x slower)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    ids = harness.split(args.rows, ROWS, [])
    if args.merge and not ids:
        parser.error("--merge re-measures the rows named by --rows")
    rows = [ROWS[s] for s in ids] if ids else catalogue()
    backends = [b for b in args.backends.split(",") if b]
    start = time.perf_counter()
    data: dict[str, Any] = {
        "machine": machine_info(),
        "config": {
            "backends": backends,
            "values_per_row": 4,
            "stat_calls": STAT_CALLS,
            "sigmas": SIGMAS,
            "float32_default": list(FLOAT32_DEFAULT),
            "inductor_cache": os.environ.get("TORCHINDUCTOR_CACHE_DIR", "(torch's default)"),
        },
        "tolerances": {op: list(v) for op, v in sorted(TOLERANCES.items())},
    }
    measured = run_table(rows, backends, stock=not args.no_stock)
    wall_s = round(time.perf_counter() - start, 1)
    if args.merge:
        data = _merged(read_json(args.out), data, measured["rows"], wall_s)
    else:
        data.update(measured)
        data["wall_s"] = wall_s
    write_json(args.out, data)
    args.page.write_text(render(data, source_name(args.out)))
    print(f"wrote {args.out} and {args.page} in {wall_s:.0f} s")
    bad = [e["id"] for e in data["rows"] if e["status"] in ("NOT EQUAL", "error")]
    if bad:
        print(f"NOT EQUAL or error: {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
