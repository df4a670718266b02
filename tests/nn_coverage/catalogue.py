"""The catalogue: one row per (torch.nn module, float attribute, mode), with the values it
takes, how the module and its inputs are built, and what a perfectly dynamic value compiles."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

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
    op: str | None = None  # the torch op the value reaches (for the page)
    kind: str = "exact"  # "exact", "dropout" (mask check) or "mean" (per-element means)
    feature: bool = False  # dropout: one draw per (N, C) channel
    alpha: bool = False  # dropout: alpha dropout (dropped values are a constant)
    compiles: int = 1  # the graphs a perfectly dynamic value needs
    # the value never reaches the graph (eval): an input the graph never uses, which
    # torch's tensorify pass keeps on inductor (before issue 49 it restarted the first
    # compile to drop it: one more graph)
    unused: bool = False
    # backends on which the value is compiled as stock torch compiles it (no rule keeps it
    # symbolic exactly): one graph per value, warned; on inductor the first compile tries
    # the value symbolically, then restarts to specialize it, and later compiles specialize
    # it at once (forced floats are remembered, as stock torch remembers them)
    specialized: tuple[str, ...] = ()
    # backends on which a backward compiled later guards the value (no restart): one graph
    # per value, warned
    late: tuple[str, ...] = ()
    # backends on which the first compile traces a torch call as Dynamo does, sees it force
    # the value (CELU's derivative formula computes 1 / alpha as a C++ double), and traces
    # the frame again with the call as eager's kernel in a custom op (one more graph, first
    # call; learned for the process)
    learned: tuple[str, ...] = ()
    # the values at which the op's inductor form takes another path, as ATen's kernel does
    # (pow's special exponents: 2 squares, 0.5 takes the square root): each a path of its
    # own on inductor, compiled once (the float the pinned path no longer reads stays an
    # unused input; before issue 49 the path's first compile restarted to drop it)
    special: tuple[float, ...] = ()
    note: str = ""

    @property
    def mode(self) -> str:
        return "train" if self.train else "eval"

    def expected(self, backend: str) -> int:
        """The graphs ``backend`` compiles for this row's 4 values."""
        # only a backend that generates kernels runs torch's float-tensorify pass (and its
        # restarts) on a marked float; eager and aot_eager hand the op the Python float
        restart = backend not in ("eager", "aot_eager")
        if backend in self.late:
            return len(self.values)
        if backend in self.specialized:
            # the first value tried symbolically, then restarted; torch remembers the forced
            # float, so each later value compiles once
            return len(self.values) + restart
        if backend == "inductor" and self.special:
            pinned = {v for v in self.values if v in self.special}
            general = any(v not in self.special for v in self.values)
            return len(pinned) + general
        return self.compiles + (backend in self.learned)

    def new_paths(self, backend: str) -> list[bool]:
        """For each value, whether it is the first of its path on ``backend``."""
        if backend != "inductor" or not self.special:
            return [i == 0 for i in range(len(self.values))]
        seen: set[Any] = set()
        first = []
        for value in self.values:
            path = value if value in self.special else "general"
            first.append(path not in seen)
            seen.add(path)
        return first


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
#: pow's exponents ATen's kernel computes otherwise (dynscalar.ops._forms)
POW_SPECIAL = (0.0, 1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0)
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
            lambda: nn.RReLU(0.125, 1 / 3), ACT, train=True, kind="mean",
            specialized=("eager", "aot_eager", "inductor"),
            note="random slopes that the gradient needs: a recomputed gradient would draw "
            "again, so the value is specialized on eager and aot_eager"),
        Row("elu", "nn.ELU", ("alpha",), (0.5, 1.0, 1.5, 2.0), lambda: nn.ELU(1.0), ACT, op="elu"),
        Row("celu", "nn.CELU", ("alpha",), (0.5, 1.0, 1.5, 2.0), lambda: nn.CELU(1.0), ACT,
            op="celu", learned=("inductor",),
            note="on inductor `celu`'s derivative formula forces alpha (1 / alpha as a C++ "
            "double): learned on the first compile, then eager's kernel in a custom op taking "
            "alpha as a 0-d tensor"),
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
            lambda: nn.LocalResponseNorm(3), LRN, op="pow", special=POW_SPECIAL,
            note="`div.pow(beta)`: eager's `pow` on eager and aot_eager; on inductor `pow` with "
            "the exponent a 0-d tensor, the exponents ATen's kernel computes otherwise (0.5, "
            "1.0 here) a path each"),
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
            (0.1, 0.2, 0.3, 0.5), _encoder, _seq, train=True, kind="mean",
            note="attention dropout inside scaled_dot_product_attention: eager's kernel, "
            "its gradient replayed from the generator state it started from"),
        Row("transformer-dropout-eval", "nn.TransformerEncoderLayer", TRANSFORMER_ATTRS,
            (0.1, 0.2, 0.3, 0.5), _encoder, _seq, unused=True, note="dropout is unused in eval"),
        Row("sdpa-dropout-train", "F.scaled_dot_product_attention", ("dropout_p",),
            (0.1, 0.2, 0.3, 0.5), lambda: SDPA(dropout_p=0.1), _qkv, train=True, grad=(0, 1, 2),
            op="scaled_dot_product_attention", kind="mean",
            note="eager's kernel in a custom op that keeps the generator state it started "
            "from; its gradient recomputes it from there"),
        Row("sdpa-dropout-eval", "F.scaled_dot_product_attention", ("dropout_p",),
            (0.1, 0.2, 0.3, 0.5), lambda: SDPA(dropout_p=0.1), _qkv, grad=(0, 1, 2),
            note="the wrapper passes 0.0 in eval: Dynamo never reads `dropout_p`"),
        Row("sdpa-scale", "F.scaled_dot_product_attention", ("scale",), (0.1, 0.3, 0.5, 1.0),
            lambda: SDPA(scale=0.3), _qkv, grad=(0, 1, 2), op="scaled_dot_product_attention",
            note="on inductor eager's kernel (CPU: the flash kernel) in a custom op taking the "
            "scale as a 0-d tensor"),
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
            note="`pairwise_distance`'s `p` is a Python float: eager's kernel in a dynscalar "
            "custom op (on inductor taking `p` as a 0-d tensor: `linalg.vector_norm`'s order "
            "is a Scalar the tensorify pass cannot lower)"),
        Row("lppool-norm", "nn.LPPool1d", ("norm_type",), (1.5, 2.0, 3.0, 4.0),
            lambda: nn.LPPool1d(2.0, 2), lambda g: (_randn(g, 2, 3, 8).abs() + 0.1,), op="pow",
            special=POW_SPECIAL,
            note="`pow(norm_type)` with a gradient: eager's `pow` in a dynscalar custom op on "
            "eager and aot_eager; on inductor `pow` with the exponent a 0-d tensor, the "
            "exponents ATen's kernel computes otherwise (2.0, 3.0 here) a path each"),
    ]
    return rows
# fmt: on


ROWS: dict[str, Row] = {row.id: row for row in catalogue()}
